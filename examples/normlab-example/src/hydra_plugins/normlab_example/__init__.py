"""normlab-example's Hydra plugin (hydra_plugins itself stays a namespace package, with no __init__)."""
