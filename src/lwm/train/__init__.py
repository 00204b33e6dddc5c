"""Training stages for world models (heavy imports happen inside the functions)."""
