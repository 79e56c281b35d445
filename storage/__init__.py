"""Formats and IO: document shards, token shards, manifests, the content-addressed stage store."""
