"""The exact engine: ``PIGP`` (``model``), its negative log marginal likelihood
(``objective``) and the posterior snapshot it predicts from (``posterior``)."""
