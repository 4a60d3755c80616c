"""The inducing-point engine: ``SparsePIGP`` (``model``), the inducing blocks and
bounds as plain functions (``inducing``) and Titsias's collapsed bound as an objective
(``collapsed``)."""
