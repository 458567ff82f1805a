import Strata

extension OpenAPIBuilder {
    /// `PATCH /books?<filters>` and `DELETE /books?<filters>`: a batch change of every object the
    /// filters match (see `RESTService.batchChange(_:_:)`).
    mutating func batchChangeOperations(_ entity: EntityDescription, plural: String, tags: OpenAPINode)
        -> [(key: String, value: OpenAPINode)]
    {
        let name = entity.name
        let parameters = OpenAPINode.array(
            filterParameters(entity) + [whereParameter(entity)] + queryParameters(entity) + [Self.preferParameter])
        let filterNote =
            "A filter is required (`attr=op.value`, `where=`, `query=`); without one the answer is 400: send "
            + "`where=TRUEPREDICATE` to choose every object on purpose. `order`, `limit`, `after`, `offset`, `count` "
            + "and `facet` are refused. All or nothing, in one transaction: versions rise, the change feed and "
            + "history see every object. `Prefer: max-affected=N` answers 412 and changes nothing when more than "
            + "N objects match (honoured whatever `handling` says); `Prefer: return=representation` adds the "
            + "objects in `items`; `Prefer: return=minimal` answers 204 with no body."
        var attributes: [(key: String, value: OpenAPINode)] = []
        for attribute in model.attributes(of: name) where !model.isDerived(attribute.name, of: name) {
            attributes.append((attribute.name, attributeSchema(attribute, mode: .patch)))
        }
        let patchSchema = OpenAPINode.members([
            ("type", "object"),
            (
                "description",
                .string(
                    "A JSON Merge Patch of attributes that every matched \(name) gets (null clears an optional one); "
                        + "relationships are changed object by object.")
            ),
            ("properties", .object(attributes)), ("minProperties", 1), ("additionalProperties", false),
        ])
        let patchBody: OpenAPINode = ["schema": patchSchema]
        let update = OpenAPINode.members([
            ("operationId", .string(operationID("batchUpdate", plural))),
            ("summary", .string("Change every \(name) the filters match")),
            (
                "description",
                .string(
                    "Sets the attributes given on every matched \(name) (subentities included). A value that "
                        + "breaks a validation rule is a 422, a broken uniqueness constraint a 409; nothing "
                        + "changes then. " + filterNote)
            ),
            ("tags", tags),
            ("parameters", parameters),
            (
                "requestBody",
                [
                    "required": true,
                    "content": ["application/json": patchBody, "application/merge-patch+json": patchBody],
                ]
            ),
            (
                "responses",
                batchResponses(entity, "The number of matched \(name) objects (and, asked for, them as saved).")
            ),
        ])
        let delete = OpenAPINode.members([
            ("operationId", .string(operationID("batchDelete", plural))),
            ("summary", .string("Delete every \(name) the filters match")),
            (
                "description",
                .string(
                    "Deletes every matched \(name) (subentities included) and applies the delete rules: cascade "
                        + "deletes related objects too, nullify clears their inverse, deny refuses the whole "
                        + "request (409) while a relationship holds an object that is not deleted with it; nothing "
                        + "changes then. Objects reached by cascade are not counted. " + filterNote)
            ),
            ("tags", tags),
            ("parameters", parameters),
            (
                "responses",
                batchResponses(entity, "The number of matched \(name) objects (and, asked for, them as they were).")
            ),
        ])
        // With no attribute to set, every patch body is refused: the server answers 405 (see
        // `RESTService.allowed(_:)`), and the document offers no operation that can only fail.
        return attributes.isEmpty ? [("delete", delete)] : [("patch", update), ("delete", delete)]
    }

    /// The `Prefer` header of a batch change.
    static var preferParameter: OpenAPINode {
        [
            "name": "Prefer", "in": "header", "required": false,
            "description": .string(
                "RFC 7240 preferences, comma-separated: `return=representation`, `return=minimal`, `max-affected=N`, "
                    + "`handling=strict` (then an unknown preference is a 400) or `handling=lenient`."),
            "schema": ["type": "string"],
            "example": "max-affected=100, return=representation",
        ]
    }

    /// A batch change's answers.
    private func batchResponses(_ entity: EntityDescription, _ description: String) -> OpenAPINode {
        let result: OpenAPINode = [
            "type": "object", "required": ["count"],
            "properties": [
                "count": [
                    "type": "integer", "format": "int64", "minimum": 0,
                    "description": "How many objects the filters matched (and the request changed or deleted).",
                ],
                "items": [
                    "type": "array", "items": ref(schemaName(entity.name)),
                    "description":
                        "With `Prefer: return=representation`: the matched objects (deleted ones with empty to-many lists).",
                ],
            ],
        ]
        return responses([
            (
                "200",
                [
                    "description": .string(description),
                    "content": ["application/json": ["schema": result]],
                ]
            ),
            ("204", ["description": "With `Prefer: return=minimal`: done, no body."]),
            ("400", nil), ("404", nil), ("409", nil), ("412", nil), ("413", nil), ("415", nil), ("422", nil),
            ("503", nil),
        ])
    }
}
