"""Tooling for developing sluice, kept out of the product packages: the seeded test and benchmark corpus
generator (`dev/corpus`, behind `sluice corpus`). Nothing in `flows/`, `tasks/`, `storage/` or `training/` needs it
to run a recipe."""
