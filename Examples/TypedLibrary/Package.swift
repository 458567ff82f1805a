// swift-tools-version:6.0
import PackageDescription

// The README's library example in typed form: the StrataModelPlugin build-tool plugin generates
// `Author`, `Book`, `Tag` and `SearchLog` from Library.xcdatamodel (a copy of
// Examples/Library.xcdatamodel, which a test keeps identical) while the target builds, and again
// whenever the model changes.
let package = Package(
    name: "TypedLibrary",
    dependencies: [.package(name: "Strata", path: "../..")],
    targets: [
        .executableTarget(
            name: "TypedLibrary",
            dependencies: [.product(name: "Strata", package: "Strata")],
            // The model is also copied beside the executable, to load at run time the model the
            // types were generated from.
            resources: [.copy("Library.xcdatamodel")],
            plugins: [.plugin(name: "StrataModelPlugin", package: "Strata")]
        )
    ],
    swiftLanguageModes: [.v6]
)
