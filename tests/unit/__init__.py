"""Pure math and pure functions: hand-worked values in float64, no trainer."""
