"""The service's routes: the JSON API (`api`) and the server-rendered pages (`pages`)."""
