"""`python -m trl_lite_lab`: the same as the `trl-lite-lab` command."""

from .cli import main

main()
