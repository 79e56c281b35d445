"""Model, FSDP2 trainer and data loader over token shards (the training issues fill this in)."""
