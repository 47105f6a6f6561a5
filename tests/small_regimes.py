"""The small life-cycle regime model the estimation tests share: sizes, age groups, start.

Eight periods from age 63 (mandatory retirement at 70 falls inside), taste shocks on the
retirement choice, everybody starting as a worker.
"""

SIZES = {
    "n_wealth": 12,
    "n_consumption": 12,
    "n_periods": 8,
    "start_age": 63,
    "n_savings": 30,
    "taste_shocks": True,
}
GROUPS = [(62, 65), (65, 67), (67, 70)]
STATES = {
    "pref_type": {"probabilities": [0.5, 0.5]},
    "income": {"label": "node_2"},
    "wealth": {"lognormal": [0.5, 0.6], "clip": [0.2, 20.0]},
}
DISTRIBUTION = STATES | {"regime": {"label": "working"}}
