"""The studio's modal screens: settings, export, error."""
