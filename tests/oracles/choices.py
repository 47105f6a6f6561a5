"""A shared check: simulated IJRS retirement choices follow the solution's logit probabilities."""

import numpy as np

from project.simulation import simulate


def simulated_retirement(*, model, params, solution, n_subjects=4000):
    """Simulate workers from wealth U(20, 120); check choice frequencies period by period.

    In every period the share choosing retirement must lie within 4.5 standard errors of the
    mean probability the solution gives at the simulated states. Returns, per period, the
    simulated rows, their states and the probability of retiring.
    """
    rng = np.random.default_rng(3)
    initial = {
        "lagged_retirement": np.zeros(n_subjects, dtype=int),
        "wealth": rng.uniform(20, 120, n_subjects),
    }
    frame = simulate(
        params=params, initial_conditions=initial, solution=solution, seed=1
    ).to_dataframe(use_labels=False)
    periods = []
    for period in range(model.n_periods):
        rows = frame[frame["period"] == period]
        states = {s: rows[s].to_numpy() for s in model.state_names}
        probability = solution.choice_probabilities(period=period, states=states)[:, 1]
        frequency = (rows["retirement"].to_numpy() == 1).mean()
        error = np.sqrt((probability * (1 - probability)).sum()) / len(rows)
        assert abs(frequency - probability.mean()) <= 4.5 * error, (period, frequency)
        periods.append((rows, states, probability))
    return periods
