from chatlog.cli import main

main()
