"""Where tensors live: `dj.device`, `dj.cuda`, and the random generators per device."""
