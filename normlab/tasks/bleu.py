"""BLEU as the translation tasks report it, both ways:
- ``bleu``: sacreBLEU with ``tokenize="none"`` on the tokenized (for IWSLT14 lowercased) references,
  which is what fairseq's ``generate.py --remove-bpe`` BLEU measures;
- ``sacrebleu``: sacreBLEU (13a) on Moses-detokenized hypotheses and references; the releases
  carry tokenized references only, so these are detokenized too.
Each score comes with its sacreBLEU signature.
"""

from __future__ import annotations

from ..errors import DataError


def tokenized_bleu(hyps: list[str], refs: list[str], lowercase: bool = False):
    """(score, signature) of BLEU on already-tokenized text: fairseq-comparable."""
    import sacrebleu  # here: every job imports this module, few of them score BLEU (~35 ms)

    bleu = sacrebleu.metrics.BLEU(tokenize="none", lowercase=lowercase, force=True)
    return bleu.corpus_score(hyps, [refs]), str(bleu.get_signature())


def detokenize(lines: list[str], lang: str) -> list[str]:
    """Moses detokenization (also unescapes the tokenizer's &apos; &quot; ...)."""
    try:
        from sacremoses import MosesDetokenizer
    except ImportError:
        raise DataError("detokenized BLEU needs sacremoses: pip install sacremoses") from None
    md = MosesDetokenizer(lang=lang)
    return [md.detokenize(x.split()) for x in lines]


def detok_bleu(hyps: list[str], refs: list[str], lowercase: bool = False):
    """(score, signature) of sacreBLEU's standard 13a BLEU on detokenized text."""
    import sacrebleu

    bleu = sacrebleu.metrics.BLEU(lowercase=lowercase)
    return bleu.corpus_score(hyps, [refs]), str(bleu.get_signature())


def score_both(hyps: list[str], refs: list[str], lang: str, lowercase: bool) -> dict:
    """Both BLEUs of ``hyps`` against ``refs`` (target language ``lang``) with their signatures,
    the tokenized BLEU's precisions and brevity penalty, and under "lines" the four texts scored
    (hyp, ref and their .detok forms), for the run directory."""
    tok, tok_sig = tokenized_bleu(hyps, refs, lowercase)
    detok_hyps, detok_refs = detokenize(hyps, lang), detokenize(refs, lang)
    det, det_sig = detok_bleu(detok_hyps, detok_refs, lowercase)
    return {
        "bleu": tok.score,
        "bleu_signature": tok_sig,
        "sacrebleu": det.score,
        "sacrebleu_signature": f"{det_sig} (references Moses-detokenized)",
        "bleu_precisions": "/".join(f"{p:.1f}" for p in tok.precisions),
        "bleu_bp": round(tok.bp, 4),
        "lines": {"hyp": hyps, "ref": refs, "hyp.detok": detok_hyps, "ref.detok": detok_refs},
    }
