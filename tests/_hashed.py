"""Sparse X with most columns empty, as hashed features give (HashingVectorizer)."""
import numpy as np
import scipy.sparse as sp


def spread_columns(X, n_features=1000, seed=0):
    """X's columns moved to sorted random places among ``n_features`` columns, the others
    empty: (the wide CSR matrix, the places)."""
    X = sp.csr_matrix(X)
    places = np.sort(np.random.default_rng(seed).choice(n_features, X.shape[1], replace=False))
    wide = sp.csr_matrix((X.data, places[X.indices], X.indptr), shape=(X.shape[0], n_features))
    return wide, places
