"""One module per competition, each holding all of that competition's facts (record, id and row rules, solution layout,
writers, scoring hook, dataset reader and generator, baseline). Written from `nbs/competitions/`; the registry of
competitions by name is `clinseg.submissions.COMPETITIONS`."""
BUILT_IN = ("hw2", "wad2018", "neopolyp", "dsb2018", "uw_madison", "siim_acr", "sartorius", "hubmap", "airbus")   # in the walkthroughs' order
EVALUATIONS = ("brats2023", "kits21", "nnunet")   # modules holding folder-evaluation protocols (`PROTOCOLS`), found by clinseg.folders
