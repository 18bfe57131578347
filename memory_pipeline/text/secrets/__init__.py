"""The families of secrets ``text.scrub.scrub_secrets`` replaces, one module per way of finding them.

- ``families``: vendor prefixes, flags and XML elements, URL user information, an AWS secret
  beside its key id, random tokens; the placeholders and the value tests the others share;
- ``lookalikes``: what looks random and is no secret (hashes, content ids, structured data);
- ``configs``: configuration formats (.pgpass, Terraform, Kubernetes, tables, JSON strings, the
  messages of a transcript's JSON lines);
- ``detectors``: detect-secrets' regex detectors, for formats not spelled out here;
- ``prose``: credentials and numbers said in a sentence, in many languages and scripts;
- ``named_after``: a password named before its credential word ("I use 'X' as my password");
- ``changes``: a password handed over as a change or a correction ("set the admin pass to X",
  "the new one is X", "X, not Y");
- ``logins``: a password given to log in with, where no credential word names it;
- ``lists``: a note's list of accounts and codes, each value after its label;
- ``numbers``: PINs, codes, combinations and the numbers of accounts and documents, named as such;
- ``lexicon``: English words by part of speech, for a plain word handed over as a password;
- ``phrases``: wallet recovery phrases, by their words.
"""
