"""One emitter per artifact family; each returns GeneratedFile objects rendered from templates."""
