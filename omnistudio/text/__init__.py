"""The text front-end: what the model is asked to say for what the producer wrote (es/en
normalisation, the pronunciation lexicon), with a map from spoken spans back to the written ones."""

from omnistudio.text.frontend import normalize
from omnistudio.text.lexicon import Entry, Lexicon
from omnistudio.text.spoken import Span, Spoken, TextWarning

__all__ = ["Entry", "Lexicon", "Span", "Spoken", "TextWarning", "normalize"]
