"""Row-wise Euclidean projections onto the sparsemax family of polytopes, with JVPs."""
