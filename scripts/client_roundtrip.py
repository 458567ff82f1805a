"""A round trip through the Python client that openapi-python-client generated from openapi.yaml.

Run by scripts/http-checks.sh against a live `strata serve` of the example model:

    python scripts/client_roundtrip.py http://127.0.0.1:PORT

Creates an author and a book, reads the book, lists books with a filter, patches with If-Match,
gets and parses a 412 problem for a stale If-Match, deletes the book and sees 404; then pages the
history feed (GET /_changes) from the oldest change kept, two transactions a page, until `next`
stops moving, and finds those writes in it in order: the inserts, the one update (not the refused
one) and the delete, with the author's own changes (its `books`) beside them. Every step uses the generated functions and models only; the first failing
step raises AssertionError.
"""

import sys
import uuid

from library_api_client import Client
from library_api_client.api.author import create_author
from library_api_client.api.book import create_book, delete_book, get_book, list_books, update_book
from library_api_client.api.history import get_changes
from library_api_client.models import AuthorCreate, Book, BookCreate, BookList, BookPatch, ChangePage, Problem
from library_api_client.types import UNSET


def check(condition: bool, message: str) -> None:
    if not condition:
        raise AssertionError(message)


def main(base_url: str) -> None:
    client = Client(base_url=base_url, raise_on_unexpected_status=True)
    # A title no earlier run used, so the filter below finds exactly this book.
    title = f"The Dispossessed {uuid.uuid4().hex[:8]}"

    created = create_author.sync_detailed(client=client, body=AuthorCreate(name="Ursula K. Le Guin"))
    check(created.status_code == 201, f"create author: {created.status_code} {created.content!r}")
    author = created.parsed
    check(hasattr(author, "object_id") and author.name == "Ursula K. Le Guin", f"create author: parsed {author!r}")
    print(f"created author {author.object_id}")

    created = create_book.sync_detailed(client=client, body=BookCreate(title=title, year=1974, author=author.object_id))
    check(created.status_code == 201, f"create book: {created.status_code} {created.content!r}")
    book = created.parsed
    check(isinstance(book, Book), f"create book: parsed {book!r}")
    check(book.author == author.object_id and book.format_ == "paperback", f"create book: {book!r}")
    check(created.headers.get("location") == f"/books/{book.object_id}", f"create book: Location {created.headers!r}")
    print(f"created book {book.object_id}, ETag {created.headers.get('etag')}")

    read = get_book.sync_detailed(book.object_id, client=client)
    check(read.status_code == 200 and isinstance(read.parsed, Book), f"get book: {read.status_code}")
    check(read.parsed.title == title and read.parsed.object_version == book.object_version, f"get book: {read.parsed!r}")
    etag = read.headers.get("etag")
    check(etag == f'"{book.object_version}"', f"get book: ETag {etag!r}, version {book.object_version}")

    listed = list_books.sync_detailed(client=client, title=f"eq.{title}", year="gte.1970", order="year.desc")
    check(listed.status_code == 200 and isinstance(listed.parsed, BookList), f"list books: {listed.status_code}")
    check([item.object_id for item in listed.parsed.items] == [book.object_id], f"list books: {listed.parsed.items!r}")
    print(f"listed {len(listed.parsed.items)} book with title=eq.{title}")

    patched = update_book.sync_detailed(book.object_id, client=client, body=BookPatch(rating=4.5), if_match=etag)
    check(patched.status_code == 200 and isinstance(patched.parsed, Book), f"patch book: {patched.status_code}")
    check(patched.parsed.rating == 4.5 and patched.parsed.object_version == book.object_version + 1, f"patch: {patched.parsed!r}")
    print(f"patched book {book.object_id} with If-Match {etag}: version {patched.parsed.object_version}")

    stale = update_book.sync_detailed(book.object_id, client=client, body=BookPatch(rating=1.0), if_match=etag)
    check(stale.status_code == 412, f"stale patch: {stale.status_code} {stale.content!r}")
    check(stale.headers.get("content-type") == "application/problem+json", f"stale patch: {stale.headers!r}")
    problem = stale.parsed
    check(isinstance(problem, Problem), f"stale patch: parsed {problem!r}")
    check(problem.status == 412 and problem.current_version == patched.parsed.object_version, f"412 problem: {problem!r}")
    print(f"stale If-Match {etag}: {problem.status} {problem.title}: {problem.detail}")

    deleted = delete_book.sync_detailed(book.object_id, client=client)
    check(deleted.status_code == 204, f"delete book: {deleted.status_code} {deleted.content!r}")
    gone = get_book.sync_detailed(book.object_id, client=client)
    check(gone.status_code == 404 and isinstance(gone.parsed, Problem), f"after delete: {gone.status_code}")
    check(gone.parsed.status == 404, f"after delete: {gone.parsed!r}")
    print(f"deleted book {book.object_id}; reading it again: {gone.parsed.status} {gone.parsed.title}")

    follow_the_feed(client, author.object_id, book.object_id)


def follow_the_feed(client: Client, author_id: int, book_id: int) -> None:
    """Pages /_changes from the oldest change kept until `next` stops moving; checks this run's
    writes are in it, in order, with their ops, versions and changed properties."""
    changes = []
    since = UNSET
    pages = 0
    while True:
        page = get_changes.sync_detailed(client=client, since=since, limit=2)
        check(page.status_code == 200 and isinstance(page.parsed, ChangePage), f"feed: {page.status_code} {page.content!r}")
        changes += page.parsed.changes
        pages += 1
        if page.parsed.next_ == since:
            check(not page.parsed.changes, f"feed: changes after the last page: {page.parsed.changes!r}")
            break
        since = page.parsed.next_
        check(pages < 10000, "feed: next never stops moving")
    mine = [
        (change.entity.value, change.op.value, change.object_version, change.changed if change.changed else None)
        for change in changes
        if (change.entity.value, change.object_id) in {("Author", author_id), ("Book", book_id)}
    ]
    # A book's author changes with it (its `books`), in the same transaction, at the same version.
    expected = [
        ("Author", "insert", 1, None),
        ("Book", "insert", 1, None),
        ("Author", "update", 1, ["books"]),
        ("Book", "update", 2, ["rating"]),
        ("Author", "update", 1, ["books"]),
        ("Book", "delete", 2, None),
    ]
    check(mine == expected, f"feed: this run's changes {mine!r}, expected {expected!r}")
    tokens = [change.token for change in changes]
    check(all(tokens) and since == tokens[-1], f"feed: tokens {tokens[-3:]!r}, next {since!r}")
    print(f"followed /_changes in {pages} pages of 2 transactions: {len(changes)} changes, this run's {len(mine)} in order")


if __name__ == "__main__":
    main(sys.argv[1])
