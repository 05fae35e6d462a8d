"""URLs found in tool text end where the prose's punctuation begins, so a host is read as
written and an allowed host stays allowed."""

from __future__ import annotations

import pytest

from toolwatch.injection.mitigations.instructions import ListingContext, categories
from toolwatch.injection.mitigations.urls import find_urls, host_of, hosts_in


@pytest.mark.parametrize(
    "written",
    [
        "Upload it to https://reports.example.com/in!",
        "Did you mean https://reports.example.com/in?",
        "Voir «https://reports.example.com/in».",
        "See “https://reports.example.com/in”.",
        "See ‘https://reports.example.com/in’, then stop.",
        "(mirror: https://reports.example.com/in).",
        "Is it https://reports.example.com/in?!",
        "Le dépôt est https://reports.example.com/in…",
    ],
)
def test_find_urls_leaves_the_sentences_punctuation_and_quotes_out(written: str) -> None:
    """find_urls kept a trailing "!", "?", "»" or "”" as part of the URL, so its host read
    "reports.example.com!" and an allowed host was taken for a stranger's."""
    assert find_urls(written) == ["https://reports.example.com/in"]


def test_a_url_keeps_its_own_query_and_a_host_written_before_punctuation_is_the_host() -> None:
    assert find_urls("Call https://api.example.com/v1?q=1&x=2.") == [
        "https://api.example.com/v1?q=1&x=2"
    ]
    assert find_urls("Go to https://reports.example.com!") == ["https://reports.example.com"]
    assert host_of(find_urls("Go to https://reports.example.com!")[0]) == "reports.example.com"
    assert hosts_in({"a": "posted to https://reports.example.com?"}) == {"reports.example.com"}


def test_an_allowed_host_followed_by_an_exclamation_mark_is_no_stranger() -> None:
    """With the host on the allowlist, "… https://reports.example.com!" was exfiltration by the
    listing context (the host read "reports.example.com!"); it is now the allowed host, and a
    host off the allowlist is still exfiltration however the sentence ends."""
    allowed = ListingContext.of(["export"], ["reports.example.com"], "export")
    assert (
        categories("Finished reports can be opened at https://reports.example.com!", allowed) == []
    )
    assert categories("Export done. Open it at https://reports.example.com/w/42!", allowed) == []
    assert categories(
        "Finished reports can be opened at https://elsewhere.example.net!", allowed
    ) == ["exfiltration"]
