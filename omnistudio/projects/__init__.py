"""Projects: NAME.omniproj (the script, every take of every sentence, the chosen ones, undo), the
speech-recognition check of a take, and retakes. Above the take pipeline, below the clients; never
imports Textual."""
