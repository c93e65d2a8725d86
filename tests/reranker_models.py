"""Tiny randomly initialised models of the rerankers' architectures, built from configs and saved to a
folder (no download): BERT sequence classification, T5 with a tokenizer holding ``▁true``/``▁false``,
a Llama with a LoRA adapter, a causal Llama for the true/false prompts."""

from __future__ import annotations

from pathlib import Path

WORDS = ("the lobster roll is a sandwich made of lobster meat pasta sauce recipe what how many people live in "
         "tokyo city capital japan population dropped query document relevant true false yes no a b c").split()


def wordpiece_vocab() -> list[str]:
    return ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *dict.fromkeys(WORDS), "##s", ":", "?", ".", ","]


def save_bert_classifier(folder: Path, num_labels: int = 1, seed: int = 0) -> Path:
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "vocab.txt").write_text("\n".join(wordpiece_vocab()) + "\n")
    tok = BertTokenizerFast(vocab_file=str(folder / "vocab.txt"), do_lower_case=True)
    torch.manual_seed(seed)
    cfg = BertConfig(vocab_size=len(wordpiece_vocab()), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=64, max_position_embeddings=512, num_labels=num_labels)
    model = BertForSequenceClassification(cfg).eval()
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def unigram_tokenizer(extra: tuple[str, ...] = (), specials: tuple[str, ...] = ("<pad>", "</s>", "<unk>"),
                      eos: str = "</s>", bos: str | None = None):
    """A sentencepiece-style (Metaspace + Unigram) fast tokenizer holding ``▁word`` for every word."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors

    pieces = [(s, 0.0) for s in specials] + [(f"▁{w}", -1.0) for w in dict.fromkeys(WORDS)] + \
        [(t, -2.0) for t in extra] + [(c, -5.0) for c in "abcdefghijklmnopqrstuvwxyz:?.,▁"]
    tok = Tokenizer(models.Unigram(pieces, unk_id=specials.index("<unk>"), byte_fallback=False))
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    tok.decoder = decoders.Metaspace()
    single = (f"{bos} $A {eos}" if bos else f"$A {eos}") if eos else (f"{bos} $A" if bos else "$A")
    ids = {t: i for i, (t, _) in enumerate(pieces)}
    tok.post_processor = processors.TemplateProcessing(
        single=single, pair=f"{single} $B:1 {eos}:1" if eos else f"{single} $B:1",
        special_tokens=[(t, ids[t]) for t in (bos, eos) if t])
    return tok, len(pieces)


def save_t5(folder: Path, seed: int = 0, encoder_only_classifier: bool = False) -> Path:
    import torch
    from transformers import PreTrainedTokenizerFast, T5Config, T5ForConditionalGeneration

    folder.mkdir(parents=True, exist_ok=True)
    tok, n = unigram_tokenizer(specials=("<pad>", "</s>", "<unk>", "<s>"))
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="</s>", unk_token="<unk>",
                                   bos_token="<s>")
    torch.manual_seed(seed)
    cfg = T5Config(vocab_size=n, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_heads=4, decoder_start_token_id=0,
                   pad_token_id=0, eos_token_id=1, num_labels=2)
    T5ForConditionalGeneration(cfg).eval().save_pretrained(folder)
    fast.save_pretrained(folder)
    return folder


def save_causal_llama(folder: Path, seed: int = 0, num_labels: int | None = None) -> Path:
    """A tiny Llama (causal LM, or sequence classification with ``num_labels``) and its tokenizer
    (``▁true``/``▁false`` and ``true``/``false`` pieces; BOS ``<s>``, EOS ``</s>`` not appended)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM, LlamaForSequenceClassification, PreTrainedTokenizerFast

    folder.mkdir(parents=True, exist_ok=True)
    tok, n = unigram_tokenizer(extra=("true", "false", "[", "]", "(", ")", '"', "/", "<", ">"),
                               specials=("<unk>", "<s>", "</s>"), eos="", bos="<s>")
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", unk_token="<unk>")
    torch.manual_seed(seed)
    cfg = LlamaConfig(vocab_size=n, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                      num_key_value_heads=2, max_position_embeddings=4096, bos_token_id=1, eos_token_id=2,
                      pad_token_id=0 if num_labels else None, num_labels=num_labels or 2)
    model = (LlamaForSequenceClassification(cfg) if num_labels else LlamaForCausalLM(cfg)).eval()
    model.save_pretrained(folder)
    fast.save_pretrained(folder)
    return folder


def save_enc_t5(folder: Path, seed: int = 0) -> Path:
    """A tiny TART-full (EncT5ForSequenceClassification: T5 encoder + classifier on <s>), two labels."""
    import torch
    from transformers import PreTrainedTokenizerFast, T5Config

    from harness.rerankers.tart import enc_t5_class

    folder.mkdir(parents=True, exist_ok=True)
    tok, n = unigram_tokenizer(extra=("[", "]", "sep"), specials=("<pad>", "</s>", "<unk>", "<s>"))
    PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="</s>", unk_token="<unk>",
                            bos_token="<s>").save_pretrained(folder)
    torch.manual_seed(seed)
    cfg = T5Config(vocab_size=n, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_heads=4, pad_token_id=0,
                   eos_token_id=1, num_labels=2)
    enc_t5_class()(cfg).eval().save_pretrained(folder)
    return folder


def save_rankllama(base: Path, adapter: Path, seed: int = 0) -> tuple[Path, Path]:
    """A tiny Llama sequence classifier (one label) and a LoRA adapter over it made with peft (random,
    non-zero B matrices, so the adapter changes the scores)."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForSequenceClassification

    save_causal_llama(base, seed=seed, num_labels=1)
    model = AutoModelForSequenceClassification.from_pretrained(base, num_labels=1)
    peft_model = get_peft_model(model, LoraConfig(task_type="SEQ_CLS", r=4, lora_alpha=8,
                                                  target_modules=["q_proj", "v_proj"]))
    torch.manual_seed(seed + 1)
    with torch.no_grad():
        for name, p in peft_model.named_parameters():
            if "lora_B" in name:
                p.normal_(0, 0.5)
    peft_model.save_pretrained(adapter)
    import json

    cfg_path = adapter / "adapter_config.json"
    cfg = json.loads(cfg_path.read_text())
    cfg["base_model_name_or_path"] = str(base)
    cfg_path.write_text(json.dumps(cfg))
    return base, adapter
