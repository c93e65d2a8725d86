"""Built-in first-stage retrievers. Each lives in its own module, imported only when used."""
