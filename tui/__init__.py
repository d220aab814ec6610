"""The Textual monitor of a search: `repoos tui` watches (or replays) the agent's event stream as a live leaderboard."""
