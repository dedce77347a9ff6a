// A file in a folder no module declares.
