"""`accelerate launch` configs for `trl-lite train --accelerate_config NAME` (adapted from TRL 1.16's); data only."""
