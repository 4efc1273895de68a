"""Built-in tasks that run offline."""
