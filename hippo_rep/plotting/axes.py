"""The axes a panel ``fn(data, ax=None) -> ax`` draws on."""


def get_ax(ax=None):
    """``ax``, or pyplot's current axes when None (pyplot is imported only then)."""
    if ax is None:
        import matplotlib.pyplot as plt

        ax = plt.gca()
    return ax
