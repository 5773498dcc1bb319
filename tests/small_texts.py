"""Three short texts of three unrelated topics, for the tiny fits of tests that need only a few
tokens."""

TEXTS = ["apple banana cherry apple", "car truck road car", "lake river water lake"]
