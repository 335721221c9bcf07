"""opgen: one declarative op definition -> every artifact a custom tensor operator needs."""

__version__ = "0.1.0"
