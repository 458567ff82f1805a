import Foundation
import StrataTestSupport
import Testing

@testable import Strata

/// Lightweight migrations Core Data infers that change how values and links are held: a Boolean
/// becoming a number and a number a Boolean, a to-many becoming ordered or unordered, a
/// one-to-many becoming many-to-many, a relationship changing its destination; on SQLite files
/// and PostgreSQL stores alike.
@Suite struct InferredShapeMigrationTests {
    static var stores: [StoreUnderTest] { InferredMigrationTests.stores }

    static func open(_ kind: StoreUnderTest, _ url: URL, _ model: ObjectModel, migrate: Bool) throws(StoreError)
        -> any PersistentStore
    {
        try InferredMigrationTests.open(kind, url, model, migrate: migrate)
    }

    static func url(_ kind: StoreUnderTest, _ folder: TemporaryDirectory, _ name: String) throws -> URL {
        kind == .sqlite ? folder.file("\(name).sqlite") : try folder.postgreSQLURL(name: name)
    }

    /// A model with one entity, `Flag`, of `attributes` (JSON objects).
    static func flags(_ version: String, _ attributes: String) throws -> ObjectModel {
        try ObjectModel.load(
            json: Array(
                #"{"name": "Flags", "version": "\#(version)", "entities": [{"name": "Flag", "attributes": [\#(attributes)]}]}"#
                    .utf8))
    }

    // MARK: Booleans and numbers

    @Test(arguments: stores)
    func booleansBecomeNumbersAndNumbersBooleans(_ kind: StoreUnderTest) throws {
        let folder = TemporaryDirectory()
        let url = try Self.url(kind, folder, "flags")
        let v1 = try Self.flags(
            "1",
            #"""
            {"name": "silenced", "type": "boolean"}, {"name": "level", "type": "integer32"},
            {"name": "ratio", "type": "double"}, {"name": "amount", "type": "decimal"}
            """#)
        let values: [AttributeValues] = [
            ["silenced": .boolean(true), "level": .integer(0), "ratio": .double(0), "amount": .decimal(0)],
            [
                "silenced": .boolean(false), "level": .integer(5), "ratio": .double(0.5),
                "amount": .decimal(Decimal(string: "2.5")!),
            ],
            ["silenced": .null, "level": .integer(-3), "ratio": .null, "amount": .null],
        ]
        var ids: [ObjectID] = []
        do {
            let store = try Self.open(kind, url, v1, migrate: false)
            defer { store.close() }
            ids = try store.newObjectIDs(entity: "Flag", count: values.count)
            try store.save(StoreChanges(inserts: zip(ids, values).map { StoreRow(id: $0, attributes: $1) }))
        }
        // Wire's `isSilenced` (Boolean) became `mutedStatus` (Integer 32).
        let v2 = try Self.flags(
            "2",
            #"""
            {"name": "mutedStatus", "renamedFrom": "silenced", "type": "integer32"}, {"name": "level", "type": "boolean"},
            {"name": "ratio", "type": "boolean"}, {"name": "amount", "type": "boolean"}
            """#)
        do {
            let store = try Self.open(kind, url, v2, migrate: true)
            defer { store.close() }
            #expect(store.metadata.modelVersion == "2")
            let found = try rows(store, "Flag")
            let column = { (name: String) in ids.map { found[$0.primaryKey!]?[attribute: name] } }
            #expect(column("mutedStatus") == [.integer(1), .integer(0), .null])
            #expect(column("level") == [.boolean(false), .boolean(true), .boolean(true)])
            #expect(column("ratio") == [.boolean(false), .boolean(true), .null])
            #expect(column("amount") == [.boolean(false), .boolean(true), .null])
        }
        // And back: a Boolean becomes 1 or 0 of any numeric type.
        let v3 = try Self.flags(
            "3",
            #"""
            {"name": "mutedStatus", "type": "boolean"}, {"name": "level", "type": "double"},
            {"name": "ratio", "type": "decimal"}, {"name": "amount", "type": "integer16"}
            """#)
        let again = try Self.open(kind, url, v3, migrate: true)
        defer { again.close() }
        let back = try rows(again, "Flag")
        let value = { (name: String) in ids.map { back[$0.primaryKey!]?[attribute: name] } }
        #expect(value("mutedStatus") == [.boolean(true), .boolean(false), .null])
        #expect(value("level") == [.double(0), .double(1), .double(1)])
        #expect(value("ratio") == [.decimal(0), .decimal(1), .null])
        #expect(value("amount") == [.integer(0), .integer(1), .null])
    }

    // MARK: Relationships

    /// A shop: orders with items (one-to-many), items with tags (many-to-many), each relationship
    /// given as JSON.
    static func shop(_ version: String, order: String, item: String, tag: String) throws -> ObjectModel {
        try ObjectModel.load(
            json: Array(
                """
                {"name": "Shop", "version": "\(version)", "entities": [
                  {"name": "Order", "attributes": [{"name": "number", "type": "integer64"}], "relationships": [\(order)]},
                  {"name": "Item", "attributes": [{"name": "name", "type": "string"}], "relationships": [\(item)]},
                  {"name": "Tag", "attributes": [{"name": "label", "type": "string"}], "relationships": [\(tag)]}
                ]}
                """.utf8))
    }

    /// The shop with `Order.items` and `Tag.items` ordered or not.
    static func shop(_ version: String, ordered: Bool) throws -> ObjectModel {
        let flag = ordered ? #", "ordered": true"# : ""
        return try shop(
            version,
            order: #"{"name": "items", "destination": "Item", "toMany": true\#(flag), "inverse": "order"}"#,
            item: #"""
                {"name": "order", "destination": "Order", "inverse": "items"},
                {"name": "tags", "destination": "Tag", "toMany": true, "inverse": "items"}
                """#,
            tag: #"{"name": "items", "destination": "Item", "toMany": true\#(flag), "inverse": "tags"}"#)
    }

    /// The members of `relationship` of `id`, by primary key, in the store's order.
    static func members(_ store: any PersistentStore, _ id: ObjectID, _ relationship: String) throws -> [Int64] {
        let here = ObjectID(store: store.identifier, entity: id.entityName, primaryKey: id.primaryKey!)
        return try store.relatedIDs(of: here, relationship: relationship).map { $0.primaryKey! }
    }

    @Test(arguments: stores)
    func toManysBecomeOrderedByKeyAndUnorderedKeepingTheirMembers(_ kind: StoreUnderTest) throws {
        let folder = TemporaryDirectory()
        let url = try Self.url(kind, folder, "shop")
        var order: ObjectID!
        var tag: ObjectID!
        var items: [ObjectID] = []
        do {
            let store = try Self.open(kind, url, try Self.shop("1", ordered: false), migrate: false)
            defer { store.close() }
            order = try store.newObjectIDs(entity: "Order", count: 1)[0]
            tag = try store.newObjectIDs(entity: "Tag", count: 1)[0]
            items = try store.newObjectIDs(entity: "Item", count: 3)
            var inserts = [
                StoreRow(id: order, attributes: ["number": .integer(1)]),
                StoreRow(id: tag, attributes: ["label": .string("sale")]),
            ]
            inserts += items.enumerated().map { StoreRow(id: $1, attributes: ["name": .string("I\($0)")]) }
            try store.save(StoreChanges(inserts: inserts))
            // Linked last item first: an unordered to-many keeps no order of its own.
            for item in [items[2], items[0], items[1]] {
                try store.save(
                    StoreChanges(updates: [StoreUpdate(id: item, expectedVersion: nil, toOne: ["order": order])]))
            }
            for item in [items[2], items[0]] {
                try store.save(
                    StoreChanges(updates: [StoreUpdate(id: item, expectedVersion: nil, toMany: ["tags": [tag]])]))
            }
        }
        let keys = items.map { $0.primaryKey! }
        do {
            // WooCommerce's `Order.items` became ordered: the members take the order of their keys.
            let store = try Self.open(kind, url, try Self.shop("2", ordered: true), migrate: true)
            defer { store.close() }
            #expect(try Self.members(store, order, "items") == keys)
            #expect(try Self.members(store, tag, "items") == [keys[0], keys[2]])
            #expect(try Self.members(store, items[2], "tags") == [tag.primaryKey!])
            // An order of their own, kept through the next migration's change of ordering.
            let here = ObjectID(store: store.identifier, entity: "Order", primaryKey: order.primaryKey!)
            let reordered = [2, 0, 1].map { ObjectID(store: store.identifier, entity: "Item", primaryKey: keys[$0]) }
            try store.save(
                StoreChanges(updates: [StoreUpdate(id: here, expectedVersion: nil, toMany: ["items": reordered])]))
            #expect(try Self.members(store, order, "items") == [keys[2], keys[0], keys[1]])
        }
        // Wire's `Conversation.allMessages` stopped being ordered: the members stay, the order goes.
        let store = try Self.open(kind, url, try Self.shop("3", ordered: false), migrate: true)
        defer { store.close() }
        #expect(try Set(Self.members(store, order, "items")) == Set(keys))
        #expect(try Set(Self.members(store, tag, "items")) == [keys[0], keys[2]])
        #expect(try Self.members(store, items[1], "tags") == [])
        #expect(try rows(store, "Item")[keys[1]]?.toOne["order"]??.primaryKey == order.primaryKey)
        if kind == .sqlite {
            #expect(try !schemaNames(url).contains("_join_Order_items"))
        }
    }

    @Test(arguments: stores)
    func aOneToManyBecomesManyToManyKeepingItsLinks(_ kind: StoreUnderTest) throws {
        let folder = TemporaryDirectory()
        let url = try Self.url(kind, folder, "art")
        // Artsy's `Artwork.artist` became `artists`, the inverse of `Artist.artworks`; its
        // `Artwork.owner`, with no inverse, becomes `owners`.
        let model = { (version: String, many: Bool) in
            try ObjectModel.load(
                json: Array(
                    """
                    {"name": "Art", "version": "\(version)", "entities": [
                      {"name": "Artist", "attributes": [{"name": "name", "type": "string"}],
                       "relationships": [{"name": "artworks", "destination": "Artwork", "toMany": true, "inverse": "\(many ? "artists" : "artist")"}]},
                      {"name": "Artwork", "attributes": [{"name": "title", "type": "string"}], "relationships": [
                        \(many
                            ? #"{"name": "artists", "renamedFrom": "artist", "destination": "Artist", "toMany": true, "inverse": "artworks"}, {"name": "owners", "renamedFrom": "owner", "destination": "Artist", "toMany": true}"#
                            : #"{"name": "artist", "destination": "Artist", "inverse": "artworks"}, {"name": "owner", "destination": "Artist"}"#)
                      ]}
                    ]}
                    """.utf8))
        }
        var artists: [ObjectID] = []
        var artworks: [ObjectID] = []
        do {
            let store = try Self.open(kind, url, try model("1", false), migrate: false)
            defer { store.close() }
            artists = try store.newObjectIDs(entity: "Artist", count: 2)
            artworks = try store.newObjectIDs(entity: "Artwork", count: 4)
            var inserts = artists.enumerated().map { StoreRow(id: $1, attributes: ["name": .string("A\($0)")]) }
            let by = [artists[0], artists[0], artists[1], nil]
            for (index, id) in artworks.enumerated() {
                inserts.append(
                    StoreRow(
                        id: id, attributes: ["title": .string("W\(index)")],
                        toOne: ["artist": by[index], "owner": index == 3 ? artists[1] : nil]))
            }
            try store.save(StoreChanges(inserts: inserts))
        }
        let plan = try (kind == .sqlite ? StoreType.sqlite : StoreType.postgresql).kind.inspect(
            url, model: try model("2", true), history: []
        ).plan
        #expect(plan?.isPossible == true, "\(plan?.summary ?? "")")
        #expect(
            plan?.changes.filter { $0.kind == .makeToMany }.map(\.description).sorted() == [
                "Artwork.artists: becomes to-many; each object's destination becomes its single member",
                "Artwork.owners: becomes to-many; each object's destination becomes its single member",
            ])
        let store = try Self.open(kind, url, try model("2", true), migrate: true)
        defer { store.close() }
        let key = { (ids: [ObjectID]) in ids.map { $0.primaryKey! } }
        #expect(
            try artworks.map { try Self.members(store, $0, "artists") } == [
                key([artists[0]]), key([artists[0]]), key([artists[1]]), [],
            ])
        #expect(try Set(Self.members(store, artists[0], "artworks")) == Set(key([artworks[0], artworks[1]])))
        #expect(try artworks.map { try Self.members(store, $0, "owners") } == [[], [], [], key([artists[1]])])
        // Many-to-many now: an artwork takes a second artist.
        let here = { (id: ObjectID) in
            ObjectID(store: store.identifier, entity: id.entityName, primaryKey: id.primaryKey!)
        }
        try store.save(
            StoreChanges(
                updates: [
                    StoreUpdate(
                        id: here(artworks[0]), expectedVersion: nil,
                        toMany: ["artists": [here(artists[0]), here(artists[1])]])
                ]))
        #expect(try Set(Self.members(store, artists[1], "artworks")) == Set(key([artworks[0], artworks[2]])))
    }

    @Test(arguments: stores)
    func aNewDestinationKeepsTheLinksToItsObjectsOnly(_ kind: StoreUnderTest) throws {
        let folder = TemporaryDirectory()
        let url = try Self.url(kind, folder, "gallery")
        // Artsy's `Album.cover` went from Artwork to Image; `Show.images` from Image to its
        // subentity InstallShot (as `Show.installationImages` did).
        let model = { (version: String, cover: String, images: String, sketch: Bool) in
            try ObjectModel.load(
                json: Array(
                    """
                    {"name": "Gallery", "version": "\(version)", "entities": [
                      {"name": "Album", "attributes": [{"name": "name", "type": "string"}],
                       "relationships": [{"name": "cover", "destination": "\(cover)"}]},
                      {"name": "Show", "attributes": [{"name": "name", "type": "string"}],
                       "relationships": [{"name": "images", "destination": "\(images)", "toMany": true}, {"name": "poster", "destination": "\(images)"}]},
                      {"name": "Artwork", "attributes": [{"name": "title", "type": "string"}]},
                      {"name": "Image", "attributes": [{"name": "url", "type": "string"}]},
                      {"name": "InstallShot", "parent": "Image", "attributes": [{"name": "room", "type": "string"}]}
                      \(sketch ? #", {"name": "Sketch", "parent": "Image", "attributes": []}"# : "")
                    ]}
                    """.utf8))
        }
        var album: ObjectID!
        var show: ObjectID!
        var images: [ObjectID] = []
        var shots: [ObjectID] = []
        do {
            let store = try Self.open(kind, url, try model("1", "Artwork", "Image", true), migrate: false)
            defer { store.close() }
            let artwork = try store.newObjectIDs(entity: "Artwork", count: 1)[0]
            images = try store.newObjectIDs(entity: "Image", count: 2)
            shots = try store.newObjectIDs(entity: "InstallShot", count: 2)
            album = try store.newObjectIDs(entity: "Album", count: 1)[0]
            show = try store.newObjectIDs(entity: "Show", count: 1)[0]
            var inserts = [StoreRow(id: artwork, attributes: ["title": .string("W")])]
            inserts += images.map { StoreRow(id: $0, attributes: ["url": .string("u")]) }
            inserts += shots.map { StoreRow(id: $0, attributes: ["url": .string("s"), "room": .string("r")]) }
            inserts.append(StoreRow(id: album, attributes: ["name": .string("A")], toOne: ["cover": artwork]))
            inserts.append(
                StoreRow(
                    id: show, attributes: ["name": .string("S")], toOne: ["poster": shots[1]],
                    toMany: ["images": [images[0], shots[0], images[1], shots[1]]]))
            try store.save(StoreChanges(inserts: inserts))
        }
        let inspect = { (model: ObjectModel) in
            try (kind == .sqlite ? StoreType.sqlite : StoreType.postgresql).kind.inspect(url, model: model, history: [])
                .plan
        }
        // An entity of the destination's hierarchy removed takes its objects with it: no change of
        // destination.
        let same = try inspect(try model("2", "Artwork", "Image", false))
        #expect(same?.isPossible == true && same?.changes.contains { $0.kind == .changeDestination } == false)
        let next = try model("2", "Image", "InstallShot", false)
        let plan = try inspect(next)
        #expect(
            plan?.changes.filter { $0.kind == .changeDestination }.map(\.description).sorted() == [
                "Album.cover: its destination changes from Artwork to Image; no object of Artwork becomes an object of Image, so its links are dropped",
                "Show.images: its destination changes from Image to InstallShot; links to objects that become InstallShot objects are kept, the others dropped",
                "Show.poster: its destination changes from Image to InstallShot; links to objects that become InstallShot objects are kept, the others dropped",
            ])
        let store = try Self.open(kind, url, next, migrate: true)
        defer { store.close() }
        #expect(try rows(store, "Album")[album.primaryKey!]?.toOne["cover"] == .some(nil))
        #expect(try Self.members(store, show, "images") == shots.map { $0.primaryKey! })
        #expect(try rows(store, "Show")[show.primaryKey!]?.toOne["poster"]??.primaryKey == shots[1].primaryKey)
        #expect(try rows(store, "Image").count == 4, "no object is deleted")
    }

    @Test(arguments: stores)
    func aToManyGainingANewInverseFillsItsColumn(_ kind: StoreUnderTest) throws {
        let folder = TemporaryDirectory()
        let url = try Self.url(kind, folder, "albums")
        // Artsy's `Album.documents`, with no inverse, gained the to-one `Document.album`.
        let model = { (version: String, inverse: Bool) in
            try ObjectModel.load(
                json: Array(
                    """
                    {"name": "Albums", "version": "\(version)", "entities": [
                      {"name": "Album", "attributes": [{"name": "name", "type": "string"}],
                       "relationships": [{"name": "documents", "destination": "Document", "toMany": true\(inverse ? #", "inverse": "album""# : "")}]},
                      {"name": "Document", "attributes": [{"name": "title", "type": "string"}],
                       "relationships": [\(inverse ? #"{"name": "album", "destination": "Album", "inverse": "documents"}"# : "")]}
                    ]}
                    """.utf8))
        }
        var albums: [ObjectID] = []
        var documents: [ObjectID] = []
        do {
            let store = try Self.open(kind, url, try model("1", false), migrate: false)
            defer { store.close() }
            albums = try store.newObjectIDs(entity: "Album", count: 2)
            documents = try store.newObjectIDs(entity: "Document", count: 4)
            var inserts = documents.map { StoreRow(id: $0, attributes: ["title": .string("D")]) }
            inserts.append(
                StoreRow(
                    id: albums[0], attributes: ["name": .string("A0")],
                    toMany: ["documents": [documents[0], documents[1]]]))
            inserts.append(
                StoreRow(id: albums[1], attributes: ["name": .string("A1")], toMany: ["documents": [documents[2]]]))
            try store.save(StoreChanges(inserts: inserts))
        }
        // A document in two albums cannot have one album: refused, the store left as it was.
        do {
            let store = try Self.open(kind, url, try model("1", false), migrate: false)
            let both = ObjectID(store: store.identifier, entity: "Album", primaryKey: albums[1].primaryKey!)
            let shared = [2, 0].map {
                ObjectID(store: store.identifier, entity: "Document", primaryKey: documents[$0].primaryKey!)
            }
            try store.save(
                StoreChanges(updates: [StoreUpdate(id: both, expectedVersion: nil, toMany: ["documents": shared])]))
            store.close()
            let next = try model("2", true)
            do {
                _ = try Self.open(kind, url, next, migrate: true)
                Issue.record("migrated a document held by two albums")
            } catch {
                #expect(
                    error.message.contains(
                        "Document.album: is the new to-one inverse of Album.documents, and 1 object of Document is a member of more than one (e.g. Document \(documents[0].primaryKey!))"
                    ), "\(error.message)")
            }
            let again = try Self.open(kind, url, try model("1", false), migrate: false)
            defer { again.close() }
            #expect(again.metadata.modelVersion == "1")
            let back = [2].map {
                ObjectID(store: again.identifier, entity: "Document", primaryKey: documents[$0].primaryKey!)
            }
            let album = ObjectID(store: again.identifier, entity: "Album", primaryKey: albums[1].primaryKey!)
            try again.save(
                StoreChanges(updates: [StoreUpdate(id: album, expectedVersion: nil, toMany: ["documents": back])]))
        }
        let store = try Self.open(kind, url, try model("2", true), migrate: true)
        defer { store.close() }
        let found = try rows(store, "Document")
        #expect(
            documents.map { found[$0.primaryKey!]?.toOne["album"] ?? nil }.map { $0?.primaryKey } == [
                albums[0].primaryKey, albums[0].primaryKey, albums[1].primaryKey, nil,
            ])
        #expect(try Set(Self.members(store, albums[0], "documents")) == Set(documents.prefix(2).map { $0.primaryKey! }))
    }

    @Test(arguments: stores)
    func bothOrdersOfAManyToManyOutliveItsSidesChangingPlaces(_ kind: StoreUnderTest) throws {
        let folder = TemporaryDirectory()
        let url = try Self.url(kind, folder, "decks")
        // Ordered on both sides; renaming Card to Tile makes Deck's side the join table's source.
        let model = { (version: String, card: String) in
            try ObjectModel.load(
                json: Array(
                    """
                    {"name": "Decks", "version": "\(version)", "entities": [
                      {"name": "Deck", "attributes": [{"name": "name", "type": "string"}],
                       "relationships": [{"name": "cards", "destination": "\(card)", "toMany": true, "ordered": true, "inverse": "decks"}]},
                      {"name": "\(card)", "renamedFrom": "Card", "attributes": [{"name": "face", "type": "string"}],
                       "relationships": [{"name": "decks", "destination": "Deck", "toMany": true, "ordered": true, "inverse": "cards"}]}
                    ]}
                    """.utf8))
        }
        var decks: [ObjectID] = []
        var cards: [ObjectID] = []
        var before: [[Int64]] = []
        do {
            let store = try Self.open(kind, url, try model("1", "Card"), migrate: false)
            defer { store.close() }
            decks = try store.newObjectIDs(entity: "Deck", count: 2)
            cards = try store.newObjectIDs(entity: "Card", count: 3)
            var inserts = cards.map { StoreRow(id: $0, attributes: ["face": .string("c")]) }
            inserts.append(
                StoreRow(
                    id: decks[0], attributes: ["name": .string("D0")],
                    toMany: ["cards": [cards[2], cards[0], cards[1]]]))
            inserts.append(
                StoreRow(id: decks[1], attributes: ["name": .string("D1")], toMany: ["cards": [cards[1], cards[2]]]))
            try store.save(StoreChanges(inserts: inserts))
            try store.save(
                StoreChanges(updates: [
                    StoreUpdate(id: cards[1], expectedVersion: nil, toMany: ["decks": [decks[1], decks[0]]])
                ]))
            before =
                try decks.map { try Self.members(store, $0, "cards") }
                + cards.map { try Self.members(store, $0, "decks") }
        }
        #expect(
            before[0] == [2, 0, 1].map { cards[$0].primaryKey! } && before[3] == [1, 0].map { decks[$0].primaryKey! })
        let store = try Self.open(kind, url, try model("2", "Tile"), migrate: true)
        defer { store.close() }
        let tiles = cards.map { ObjectID(store: store.identifier, entity: "Tile", primaryKey: $0.primaryKey!) }
        let after =
            try decks.map { try Self.members(store, $0, "cards") } + tiles.map { try Self.members(store, $0, "decks") }
        #expect(after == before)
        if kind == .sqlite {
            #expect(try schemaNames(url).contains("_join_Deck_cards"))
        }
    }
}
