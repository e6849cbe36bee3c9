from chatlog.cli.main import main

main()
