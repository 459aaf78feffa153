"""``normlab_translation``: fairseq's translation task whose models get normlab's norms.

No ``from __future__ import annotations`` here: fairseq builds its command line from the config
dataclass's field types, which must be real types, not strings."""

from dataclasses import dataclass, field

from fairseq.modules import MultiheadAttention
from fairseq.tasks import register_task
from fairseq.tasks.translation import TranslationConfig, TranslationTask

from ...norms import convert_norms
from . import parse_norm_options


@dataclass
class NormlabTranslationConfig(TranslationConfig):
    norm: str = field(
        default="layernorm",
        metadata={
            "help": "normlab norm variant for every norm position: layernorm, layernorm_simple, detachnorm, "
            "adanorm, rmsnorm, dyt, ... (normlab.norms.registry)"
        },
    )
    norm_options: str = field(
        default="",
        metadata={
            "help": "comma-separated KEY=VALUE options of the norm, e.g. C=2,k=0.1 for adanorm"
        },
    )
    attention_init: str = field(
        default="fairseq",
        metadata={
            "help": "fairseq: fairseq's own attention init (xavier-uniform, q/k/v with gain "
            "1/sqrt(2), out_proj bias 0); torch: PyTorch's Linear default for every attention "
            "projection, weights and biases, as in normlab's models (the weights are what Xu et "
            "al.'s scripts set with --init_method km)"
        },
    )


@register_task("normlab_translation", dataclass=NormlabTranslationConfig)
class NormlabTranslationTask(TranslationTask):
    def build_model(self, cfg, from_checkpoint=False):
        if self.cfg.attention_init not in ("fairseq", "torch"):
            raise ValueError(
                f"--attention-init {self.cfg.attention_init!r}: choose fairseq or torch"
            )
        model = super().build_model(cfg, from_checkpoint)
        if self.cfg.attention_init == "torch":
            for m in model.modules():
                if isinstance(m, MultiheadAttention):
                    for proj in (m.q_proj, m.k_proj, m.v_proj, m.out_proj):
                        proj.reset_parameters()
        # fairseq builds the optimizer and loads checkpoints after this returns, so the new
        # norms' parameters are the ones trained and restored
        convert_norms(model, self.cfg.norm, **parse_norm_options(self.cfg.norm_options))
        return model
