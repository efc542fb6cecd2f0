"""System tests: the whole game or the whole checkout.

Real Evennia servers (``server`` marker), the browser (``browser``), the install from a wheel,
end-to-end talks and the fault soak; and the checks of the repository as a whole: the package's
layers, the packaging, the test harness and this folder layout, the benches' pieces and scripts.
"""
