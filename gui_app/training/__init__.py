"""Training-data producers used by the recorders and the model: the dataset layout, derived negatives, conversion,
cursor themes and the pointer sprite."""
