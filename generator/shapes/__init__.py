"""The shape-rule language: compiling a definition's shape patterns into a rule, evaluating it, and
spelling it in each target."""
