"""Test-only re-expressions of challenge organisers' evaluation code, each naming the repository, commit and path it
follows. They are independent of clinseg's implementations (so a test comparing the two means something) and are not
shipped with the library."""
