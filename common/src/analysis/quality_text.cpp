// The fixed English text of chapter 09's perplexity measurement: chapter 1 of Jane Austen's
// "Pride and Prejudice" (London: T. Egerton, 1813), in the public domain, as in Project
// Gutenberg's eBook #1342 (https://www.gutenberg.org/ebooks/1342) in its plain-ASCII edition
// (release date August 26, 2008; produced by Anonymous Volunteers and David Widger): the
// chapter's text without its heading, each paragraph's wrapped lines joined by one space, and
// the underscores that mark italics (_You_ want) dropped. Checked byte for byte against a copy
// of that edition's text. The edition Gutenberg serves today under the same number transcribes
// the 1894 George Allen printing instead (curly quotes; a few words differ, e.g. "considered as
// the rightful property", "Do not you want to know").
// A story of everyday people in plain English, so that the small TinyStories models and
// SmolLM2 both have something to predict.
#include "inferlab/analysis/quant_quality.hpp"

namespace inferlab {

const std::string& quality_text() {
  static const std::string text =
      "It is a truth universally acknowledged, that a single man in possession of a good "
      "fortune, must be in want of a wife.\n\n"
      "However little known the feelings or views of such a man may be on his first entering "
      "a neighbourhood, this truth is so well fixed in the minds of the surrounding families, "
      "that he is considered the rightful property of some one or other of their daughters.\n\n"
      "\"My dear Mr. Bennet,\" said his lady to him one day, \"have you heard that "
      "Netherfield Park is let at last?\"\n\n"
      "Mr. Bennet replied that he had not.\n\n"
      "\"But it is,\" returned she; \"for Mrs. Long has just been here, and she told me all "
      "about it.\"\n\n"
      "Mr. Bennet made no answer.\n\n"
      "\"Do you not want to know who has taken it?\" cried his wife impatiently.\n\n"
      "\"You want to tell me, and I have no objection to hearing it.\"\n\n"
      "This was invitation enough.\n\n"
      "\"Why, my dear, you must know, Mrs. Long says that Netherfield is taken by a young man "
      "of large fortune from the north of England; that he came down on Monday in a chaise "
      "and four to see the place, and was so much delighted with it, that he agreed with Mr. "
      "Morris immediately; that he is to take possession before Michaelmas, and some of his "
      "servants are to be in the house by the end of next week.\"\n\n"
      "\"What is his name?\"\n\n"
      "\"Bingley.\"\n\n"
      "\"Is he married or single?\"\n\n"
      "\"Oh! Single, my dear, to be sure! A single man of large fortune; four or five "
      "thousand a year. What a fine thing for our girls!\"\n\n"
      "\"How so? How can it affect them?\"\n\n"
      "\"My dear Mr. Bennet,\" replied his wife, \"how can you be so tiresome! You must know "
      "that I am thinking of his marrying one of them.\"\n\n"
      "\"Is that his design in settling here?\"\n\n"
      "\"Design! Nonsense, how can you talk so! But it is very likely that he may fall in "
      "love with one of them, and therefore you must visit him as soon as he comes.\"\n\n"
      "\"I see no occasion for that. You and the girls may go, or you may send them by "
      "themselves, which perhaps will be still better, for as you are as handsome as any of "
      "them, Mr. Bingley may like you the best of the party.\"\n\n"
      "\"My dear, you flatter me. I certainly have had my share of beauty, but I do not "
      "pretend to be anything extraordinary now. When a woman has five grown-up daughters, "
      "she ought to give over thinking of her own beauty.\"\n\n"
      "\"In such cases, a woman has not often much beauty to think of.\"\n\n"
      "\"But, my dear, you must indeed go and see Mr. Bingley when he comes into the "
      "neighbourhood.\"\n\n"
      "\"It is more than I engage for, I assure you.\"\n\n"
      "\"But consider your daughters. Only think what an establishment it would be for one of "
      "them. Sir William and Lady Lucas are determined to go, merely on that account, for in "
      "general, you know, they visit no newcomers. Indeed you must go, for it will be "
      "impossible for us to visit him if you do not.\"\n\n"
      "\"You are over-scrupulous, surely. I dare say Mr. Bingley will be very glad to see "
      "you; and I will send a few lines by you to assure him of my hearty consent to his "
      "marrying whichever he chooses of the girls; though I must throw in a good word for my "
      "little Lizzy.\"\n\n"
      "\"I desire you will do no such thing. Lizzy is not a bit better than the others; and I "
      "am sure she is not half so handsome as Jane, nor half so good-humoured as Lydia. But "
      "you are always giving her the preference.\"\n\n"
      "\"They have none of them much to recommend them,\" replied he; \"they are all silly "
      "and ignorant like other girls; but Lizzy has something more of quickness than her "
      "sisters.\"\n\n"
      "\"Mr. Bennet, how can you abuse your own children in such a way? You take delight in "
      "vexing me. You have no compassion for my poor nerves.\"\n\n"
      "\"You mistake me, my dear. I have a high respect for your nerves. They are my old "
      "friends. I have heard you mention them with consideration these last twenty years at "
      "least.\"\n\n"
      "\"Ah, you do not know what I suffer.\"\n\n"
      "\"But I hope you will get over it, and live to see many young men of four thousand a "
      "year come into the neighbourhood.\"\n\n"
      "\"It will be no use to us, if twenty such should come, since you will not visit "
      "them.\"\n\n"
      "\"Depend upon it, my dear, that when there are twenty, I will visit them all.\"\n\n"
      "Mr. Bennet was so odd a mixture of quick parts, sarcastic humour, reserve, and caprice, "
      "that the experience of three-and-twenty years had been insufficient to make his wife "
      "understand his character. Her mind was less difficult to develop. She was a woman of "
      "mean understanding, little information, and uncertain temper. When she was discontented, "
      "she fancied herself nervous. The business of her life was to get her daughters married; "
      "its solace was visiting and news.\n";
  return text;
}

const char* quality_text_source() {
  return "Jane Austen, Pride and Prejudice (1813), chapter 1; public domain, Project Gutenberg "
         "eBook #1342";
}

}  // namespace inferlab
