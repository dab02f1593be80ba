"""Tables, migrations, sessions and queries. Imports only `recipes`."""
