// A round trip through the TypeScript client that openapi-generator's typescript-fetch generated
// from openapi.yaml, compiled by tsc together with the client (so a type this file misuses, or
// a client that does not compile, fails the check) and run under Node against a live server:
//
//     node dist/client_roundtrip.js http://127.0.0.1:PORT
//
// Run by scripts/http-checks.sh. Creates an author, a book and two books at once, reads a book,
// lists with a filter, patches with If-Match, gets the 412 problem for a stale If-Match, deletes
// the book and sees 404; then pages the history feed (GET /_changes) from the oldest change kept,
// two transactions a page, until `next` stops moving, and finds those writes in it in order. Every
// call goes through the generated APIs and models; the first failing step throws.
import { AuthorApi, BookApi, Change, Configuration, HistoryApi, ResponseError } from "./index";

// Node's own, declared here: Debian's tsc comes without Node's type definitions.
declare const process: { argv: string[]; exit(code: number): never };

function check(condition: boolean, message: string): void {
    if (!condition) throw new Error("round trip: " + message);
}

async function main(basePath: string): Promise<void> {
    const configuration = new Configuration({ basePath });
    const authors = new AuthorApi(configuration);
    const books = new BookApi(configuration);
    const title = "The Dispossessed " + Math.random().toString(16).slice(2, 10);

    const author = await authors.createAuthor({ authorCreate: { name: "Ursula K. Le Guin" } });
    check(author.name === "Ursula K. Le Guin" && author.id > 0, "create author: " + JSON.stringify(author));
    console.log(`created author ${author.id}`);

    const created = await books.createBookRaw({ bookCreate: { title, year: 1974, author: author.id } });
    check(created.raw.status === 201, `create book: ${created.raw.status}`);
    const book = await created.value();
    check(book.author === author.id && book.format === "paperback", "create book: " + JSON.stringify(book));
    check(created.raw.headers.get("location") === `/books/${book.id}`, "create book: Location");
    console.log(`created book ${book.id}, ETag ${created.raw.headers.get("etag")}`);

    const several = await books.bulkCreateBooks({
        bookCreate: [{ title: title + " I", year: 1975 }, { title: title + " II", year: 1976 }],
    });
    check(several.length === 2 && several[1].title === title + " II", "bulk create: " + JSON.stringify(several));
    console.log(`created books ${several.map((item) => item.id).join(", ")} at once`);

    const read = await books.getBookRaw({ id: book.id });
    const readBook = await read.value();
    const etag = read.raw.headers.get("etag") ?? "";
    check(readBook.title === title && etag === `"${book.version}"`, `get book: ${etag} ${JSON.stringify(readBook)}`);

    const listed = await books.listBooks({ title: `eq.${title}`, year: "gte.1970", order: "year.desc" });
    check(listed.items.length === 1 && listed.items[0].id === book.id, "list books: " + JSON.stringify(listed));
    console.log(`listed ${listed.items.length} book with title=eq.${title}`);

    const patched = await books.updateBook({ id: book.id, bookPatch: { rating: 4.5 }, ifMatch: etag });
    check(patched.rating === 4.5 && patched.version === book.version + 1, "patch: " + JSON.stringify(patched));
    console.log(`patched book ${book.id} with If-Match ${etag}: version ${patched.version}`);

    try {
        await books.updateBook({ id: book.id, bookPatch: { rating: 1 }, ifMatch: etag });
        check(false, "a stale If-Match was accepted");
    } catch (error) {
        check(error instanceof ResponseError, "stale patch: " + String(error));
        const response = (error as ResponseError).response;
        const problem = await response.json();
        check(response.status === 412 && problem.currentVersion === patched.version, "412: " + JSON.stringify(problem));
        check(response.headers.get("content-type") === "application/problem+json", "412 content type");
        console.log(`stale If-Match ${etag}: ${problem.status} ${problem.title}`);
    }

    await books.deleteBook({ id: book.id });
    try {
        await books.getBook({ id: book.id });
        check(false, "the deleted book is still there");
    } catch (error) {
        check(error instanceof ResponseError && error.response.status === 404, "after delete: " + String(error));
        console.log(`deleted book ${book.id}; reading it again: 404`);
    }

    await followTheFeed(new HistoryApi(configuration), author.id, book.id, several.map((item) => item.id));
}

// Pages /_changes from the oldest change kept until `next` stops moving, and checks that this
// run's writes are in it, in commit order, with their ops, versions and changed properties.
async function followTheFeed(history: HistoryApi, authorID: number, bookID: number, bulkIDs: number[]): Promise<void> {
    const changes: Change[] = [];
    let since: string | undefined = undefined;
    let pages = 0;
    for (;;) {
        const page = await history.getChanges({ since, limit: 2 });
        changes.push(...page.changes);
        pages += 1;
        if (page.next === since) {
            check(page.changes.length === 0, "feed: changes after the last page: " + JSON.stringify(page.changes));
            break;
        }
        since = page.next;
        check(pages < 10000, "feed: next never stops moving");
    }
    const mine = changes
        .filter((change) =>
            change.entity === "Author" ? change.id === authorID : change.id === bookID || bulkIDs.includes(change.id))
        .filter((change) => change.entity === "Author" || change.entity === "Book")
        .map((change) => [change.entity, change.id, change.op, change.version, (change.changed ?? []).join(",")].join(" "));
    // A book's author changes with it (its `books`), in the same transaction, at the same version.
    const expected = [
        `Author ${authorID} insert 1 `,
        `Book ${bookID} insert 1 `,
        `Author ${authorID} update 1 books`,
        ...bulkIDs.map((id) => `Book ${id} insert 1 `),
        `Book ${bookID} update 2 rating`,
        `Author ${authorID} update 1 books`,
        `Book ${bookID} delete 2 `,
    ];
    check(JSON.stringify(mine) === JSON.stringify(expected), "feed: " + JSON.stringify(mine) + " not " + JSON.stringify(expected));
    check(changes.every((change) => change.at instanceof Date && change.token.length > 0), "feed: tokens and times");
    check(changes[changes.length - 1].token === since, "feed: the last change's token is not next");
    console.log(`followed /_changes in ${pages} pages of 2 transactions: ${changes.length} changes, this run's ${mine.length} in order`);
}

main(process.argv[2]).catch((error) => {
    console.error(error);
    process.exit(1);
});
