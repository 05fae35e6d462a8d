"""What a person runs on top of every other room: the dashboard and the demo."""
