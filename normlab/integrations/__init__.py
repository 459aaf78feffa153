"""Optional bridges to other tools (wandb dashboards, fairseq); each imports its tool lazily, so
normlab itself never needs them installed."""
