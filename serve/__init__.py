"""``zan serve``: the lookup API and the registry browser over the published version (:mod:`serve.app`)."""
