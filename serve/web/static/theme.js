// The theme chosen with the toggle, applied before the page paints (else the system's, by CSS).
try {
  const chosen = localStorage.getItem("chatlog-theme");
  if (chosen === "dark" || chosen === "light") document.documentElement.dataset.theme = chosen;
} catch (_) { /* storage disabled: follow the system */ }
