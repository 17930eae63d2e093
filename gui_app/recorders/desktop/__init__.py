"""Real desktop recordings: scripted agents driving Debian desktop applications under Xvfb, checked from their
end state and written both as OSWorld result directories and as native trajectories.

Modules: :mod:`.display` (Xvfb, openbox, screenshots, x11grab recording, waits), :mod:`.style` (per-episode
look), :mod:`.apps` (a fresh HOME and the applications of one episode), :mod:`.agent` (real input, one recorded
step per action), :mod:`.tasks` (task types, the agent's plans and mistakes), :mod:`.checkers` (end-state
readers), :mod:`.writer` (OSWorld and native layouts), :mod:`.recorder` (episodes, workers, ``collect``).
"""
