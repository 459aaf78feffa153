from .embedding import TokenEmbedding
from .transformer import (
    MultiheadAttention,
    TransformerConfig,
    TransformerDecoder,
    TransformerEncoder,
)

__all__ = [
    "TokenEmbedding",
    "MultiheadAttention",
    "TransformerConfig",
    "TransformerEncoder",
    "TransformerDecoder",
]
