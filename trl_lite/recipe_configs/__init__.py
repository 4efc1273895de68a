"""The paper setups as `trl-lite train --config NAME` files (arXiv 2508.08221, Section 3); data only."""
