"""Reading definition files into the model, with every error located (file, line, column, field)."""
