"""An example normlab plugin: one norm class (norm.py) and its config (configs/norm/lpnorm.yaml)."""
