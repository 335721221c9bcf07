"""The typed op model: frozen dataclasses, one module per concept, built only by
generator.parse (which checks every invariant) and read by the emitters."""
