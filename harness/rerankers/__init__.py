"""Local model rerankers in their published formats: cross-encoders and monoBERT, monoT5, TART,
RankLLaMA and the true/false LLM rerankers (``docs/rerankers.md``). Each module imports torch and
transformers inside functions only; the registry refers to them lazily."""
