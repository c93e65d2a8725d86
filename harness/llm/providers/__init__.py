"""Built-in LLM providers. Each module imports its SDK only when the first call is made."""
