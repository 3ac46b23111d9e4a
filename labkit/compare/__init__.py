"""What every comparison shares: the runner, provenance, paired statistics, switchable features, targets."""
