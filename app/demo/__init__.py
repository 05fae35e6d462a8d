"""The demo (``toolwatch demo``): the whole product composed on embedded data — simulate,
train, experiment, then a live collector scoring a real instrumented agent through the fault
proxy. It lives in app/ because it is, like the dashboard, a composition of every other room
that a person runs; nothing below app/ may import it."""
